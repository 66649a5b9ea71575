//! What the real-node tests and the real-node benchmark of the operator share: the real
//! node with the Redis images and the operator Deployment (once per binary), and a few
//! Redis and cluster helpers.

#![allow(dead_code)] // the test binary and the benchmark use different parts

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use e2e::node::{ContainerConfig, RootfsEntry};
use e2e::{ControlPlane, RealNode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use redis_operator::api::v1::{Phase, RedisCluster};
use redis_operator::redis::{Connection, Replication};
use serde_json::json;
use tokio::sync::OnceCell;

pub const OPERATOR_NAMESPACE: &str = "redis-operator-system";

/// The Redis image tags the CRD's versions map to: one build of Debian's redis-server under
/// each tag, so a version change is a real image change (a new reference) of the same binary.
pub const VERSIONS: [&str; 3] = ["6.2", "7.0", "7.2"];

/// The node and control plane every test of the binary shares.
pub struct Setup {
    /// The real node.
    pub node: &'static RealNode,
    /// The Redis image per version tag (what the operator's RELATED_IMAGE_REDIS_* name).
    pub redis_images: BTreeMap<&'static str, String>,
    /// The control plane.
    pub plane: &'static std::sync::Arc<ControlPlane>,
}

static SETUP: OnceCell<Setup> = OnceCell::const_new();

/// The real node, the Redis images, and the operator Deployment (2 replicas, one leader),
/// once per test binary.
pub async fn setup() -> anyhow::Result<&'static Setup> {
    SETUP
        .get_or_try_init(|| async {
            // The shared control plane lives as long as the test binary (a static holds it);
            // a leaked handle lets the setup hand out a 'static node.
            let plane: &'static std::sync::Arc<ControlPlane> =
                Box::leak(Box::new(ControlPlane::shared().await?));
            let node = plane.real_node().await?;
            let client = plane.client().await?;
            let images = push_redis_images(node).await?;
            deploy_operator(node, &client, &images).await?;
            Ok(Setup {
                node,
                redis_images: images,
                plane,
            })
        })
        .await
}

/// Debian's redis-server and redis-cli with their libraries, and busybox for the start and
/// probe scripts (`sh`, `sha256sum`, `cat`).
pub async fn push_redis_images(node: &RealNode) -> anyhow::Result<BTreeMap<&'static str, String>> {
    push_redis_images_named(node, |version| Ok(format!("e2e/redis:{version}"))).await
}

/// The same images, pushed under the repository path `name(version)` gives.
pub async fn push_redis_images_named(
    node: &RealNode,
    name: impl Fn(&str) -> anyhow::Result<String>,
) -> anyhow::Result<BTreeMap<&'static str, String>> {
    let server = Path::new("/usr/bin/redis-server");
    let cli = Path::new("/usr/bin/redis-cli");
    let busybox = Path::new("/bin/busybox");
    for (program, package) in [(server, "redis-server"), (busybox, "busybox-static")] {
        anyhow::ensure!(
            program.is_file(),
            "{} is missing: install Debian's {package} (the README test command does)",
            program.display()
        );
    }
    let mut extra = vec![
        RootfsEntry::Dir {
            path: "/data".into(),
            mode: 0o1777,
        },
        RootfsEntry::Dir {
            path: "/run/redis".into(),
            mode: 0o1777,
        },
        RootfsEntry::File {
            path: "/bin/busybox".into(),
            source: busybox.into(),
            mode: 0o755,
        },
    ];
    for applet in ["sh", "sha256sum", "cat", "ls", "kill", "sleep"] {
        extra.push(RootfsEntry::Symlink {
            path: format!("/bin/{applet}"),
            target: "busybox".into(),
        });
    }
    let config = ContainerConfig {
        entrypoint: vec!["/usr/bin/redis-server".into()],
        user: "999:999".into(),
        env: vec!["PATH=/usr/bin:/bin".into()],
        ..ContainerConfig::default()
    };
    let mut images = BTreeMap::new();
    for version in VERSIONS {
        let image = node
            .push_programs(&name(version)?, &[server, cli], extra.clone(), &config)
            .await?;
        images.insert(version, image);
    }
    Ok(images)
}

/// The statically linked operator the README test command builds
/// (`RUSTFLAGS="-C target-feature=+crt-static" cargo build -p redis-operator --target
/// x86_64-unknown-linux-gnu`), refused when older than the operator's sources.
pub fn static_operator_binary() -> anyhow::Result<std::path::PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| manifest.join("../target"));
    // E2E_OPERATOR_BINARY picks another static build (the benchmark measures a release one).
    let binary = std::env::var_os("E2E_OPERATOR_BINARY")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| target.join("x86_64-unknown-linux-gnu/debug/redis-operator"));
    let build = "RUSTFLAGS=\"-C target-feature=+crt-static\" cargo build -p redis-operator --target x86_64-unknown-linux-gnu (the README test command does)";
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .map_err(|e| anyhow::anyhow!("{}: {e}: run {build}", binary.display()))?;
    let mut newest = std::time::SystemTime::UNIX_EPOCH;
    let mut folders = vec![manifest.join("src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)?.flatten() {
            let meta = entry.metadata()?;
            if meta.is_dir() {
                folders.push(entry.path());
            } else {
                newest = newest.max(meta.modified()?);
            }
        }
    }
    anyhow::ensure!(
        built >= newest,
        "{} is older than operator/src: run {build}",
        binary.display()
    );
    anyhow::ensure!(
        !has_interpreter(&std::fs::read(&binary)?),
        "{} is dynamically linked: run {build}",
        binary.display()
    );
    Ok(binary)
}

/// An ELF64 file with a PT_INTERP program header needs a dynamic loader (the image has none).
fn has_interpreter(elf: &[u8]) -> bool {
    let read = |at: usize, n: usize| elf.get(at..at + n);
    let (Some(phoff), Some(phentsize), Some(phnum)) = (read(0x20, 8), read(0x36, 2), read(0x38, 2))
    else {
        return true;
    };
    let phoff = u64::from_le_bytes(phoff.try_into().expect("8 bytes")) as usize;
    let phentsize = u16::from_le_bytes(phentsize.try_into().expect("2 bytes")) as usize;
    let phnum = u16::from_le_bytes(phnum.try_into().expect("2 bytes")) as usize;
    (0..phnum).any(|i| {
        read(phoff + i * phentsize, 4)
            .is_none_or(|t| u32::from_le_bytes(t.try_into().expect("4 bytes")) == 3)
    })
}

/// `redis-operator manifests`, applied as written except the operator image (this build's,
/// from the local registry), the Redis images (the local ones) and two replicas.
pub async fn deploy_operator(
    node: &RealNode,
    client: &kube::Client,
    redis_images: &BTreeMap<&'static str, String>,
) -> anyhow::Result<()> {
    let binary = Path::new(env!("CARGO_BIN_EXE_redis-operator"));
    // The image is what a release makes: `bundle-tool build --binary` of the statically
    // linked operator, the binary alone.
    let image = bundle_tool::image::build_binary_image(
        &static_operator_binary()?,
        &BTreeMap::from([(
            "org.opencontainers.image.title".to_string(),
            "redis-operator".to_string(),
        )]),
    )?;
    let image = node.push_image("e2e/redis-operator:dev", &image).await?;
    let output = std::process::Command::new(binary)
        .arg("manifests")
        .output()?;
    anyhow::ensure!(output.status.success(), "redis-operator manifests failed");
    let mut text = String::from_utf8(output.stdout)?;
    let swaps = [
        ("quay.io/example/redis-operator:0.1.0".to_string(), image),
        (
            "docker.io/library/redis:6.2".into(),
            redis_images["6.2"].clone(),
        ),
        (
            "docker.io/library/redis:7.0".into(),
            redis_images["7.0"].clone(),
        ),
        (
            "docker.io/library/redis:7.2".into(),
            redis_images["7.2"].clone(),
        ),
    ];
    for (from, to) in swaps {
        anyhow::ensure!(text.contains(&from), "the manifests name no {from} to swap");
        text = text.replace(&from, &to);
    }
    node.namespace(client, OPERATOR_NAMESPACE).await?;
    e2e::olm::apply_yaml(client, &text).await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    deployments
        .patch(
            "redis-operator",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await?;
    e2e::eventually(
        Duration::from_secs(120),
        "two operator pods available",
        || async {
            node.check_running()?;
            let d = deployments.get("redis-operator").await?;
            let available = d.status.and_then(|s| s.available_replicas).unwrap_or(0);
            Ok((available >= 2).then_some(()))
        },
    )
    .await
}

pub fn operator_logs(node: &RealNode) -> String {
    let mut all = String::new();
    for pod in operator_pod_names(node) {
        if let Ok(output) = node.kubectl(&["logs", "-n", OPERATOR_NAMESPACE, &pod, "--tail=-1"]) {
            all.push_str(&String::from_utf8_lossy(&output.stdout));
        }
    }
    all
}

pub fn operator_pod_names(node: &RealNode) -> Vec<String> {
    node.kubectl(&[
        "get",
        "pods",
        "-n",
        OPERATOR_NAMESPACE,
        "-l",
        "app.kubernetes.io/name=redis-operator",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])
    .map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

/// The last lines of every operator pod's log, for a failure message.
pub fn with_logs(node: &RealNode) -> impl FnOnce(anyhow::Error) -> anyhow::Error + '_ {
    move |e| {
        let logs = operator_logs(node);
        let tail: Vec<&str> = logs.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        anyhow::anyhow!(
            "{e:#}\nthe operator's log (last lines):\n{}",
            tail.join("\n")
        )
    }
}

pub async fn new_cluster(
    client: &kube::Client,
    ns: &str,
    spec: serde_json::Value,
) -> anyhow::Result<Api<RedisCluster>> {
    let clusters: Api<RedisCluster> = Api::namespaced(client.clone(), ns);
    let cluster: RedisCluster = serde_json::from_value(json!({
        "apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
        "metadata": {"name": "my-redis"}, "spec": spec,
    }))?;
    clusters.create(&PostParams::default(), &cluster).await?;
    Ok(clusters)
}

pub fn is_running(cluster: &RedisCluster, replicas: i32) -> bool {
    let Some(status) = &cluster.status else {
        return false;
    };
    status.phase == Some(Phase::Running)
        && status.ready_replicas == replicas
        && status.observed_generation == cluster.metadata.generation
        && status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

pub async fn wait_running(
    setup: &Setup,
    clusters: &Api<RedisCluster>,
    replicas: i32,
    timeout: Duration,
) -> anyhow::Result<RedisCluster> {
    e2e::eventually(
        timeout,
        &format!("{replicas} ready replicas, Running, Ready=True"),
        || async {
            setup.node.check_running()?;
            let c = clusters.get("my-redis").await?;
            Ok(is_running(&c, replicas).then_some(c))
        },
    )
    .await
    .map_err(with_logs(setup.node))
}

pub async fn pod_address(pods: &Api<Pod>, name: &str) -> anyhow::Result<SocketAddr> {
    let pod = pods.get(name).await?;
    let ip = pod
        .status
        .and_then(|s| s.pod_ip)
        .with_context(|| format!("{name} has no IP"))?;
    Ok(SocketAddr::new(ip.parse()?, 6379))
}

pub async fn service_address(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> anyhow::Result<SocketAddr> {
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let ip = services
        .get(name)
        .await?
        .spec
        .and_then(|s| s.cluster_ip)
        .with_context(|| format!("Service {name} has no cluster IP"))?;
    let address = SocketAddr::new(ip.parse()?, 6379);
    // The cluster's Ready condition follows the pods' readiness; kube-proxy learns of the
    // ready endpoints a moment later, and until then a connection to the Service is
    // refused (its rule for a Service without endpoints is a REJECT). A client retries the
    // same way; a Service that never gets an endpoint still fails here, after 30 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::net::TcpStream::connect(address).await {
            Ok(_) => return Ok(address),
            Err(e) if Instant::now() >= deadline => {
                return Err(e).with_context(|| {
                    format!("Service {ns}/{name} at {address} still refuses after 30 s")
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// One command on a fresh connection (a Service address picks its endpoint per connection).
pub async fn redis(
    address: SocketAddr,
    auth: Option<(&str, &str)>,
    args: &[&str],
) -> anyhow::Result<String> {
    let mut c = Connection::open(address, auth, Duration::from_secs(2)).await?;
    let reply = c.call(args).await?;
    Ok(match reply {
        redis_operator::redis::Reply::Integer(n) => n.to_string(),
        other => other.text().unwrap_or_default(),
    })
}

pub async fn replication(
    address: SocketAddr,
    auth: Option<(&str, &str)>,
) -> anyhow::Result<Replication> {
    let text = redis(address, auth, &["INFO", "replication"]).await?;
    Replication::parse(&text).with_context(|| format!("no role in {text}"))
}

/// The replicas of a cluster without a password: the test talks to them as `default`.
pub const NO_AUTH: Option<(&str, &str)> = None;

pub async fn events(client: &kube::Client, ns: &str) -> anyhow::Result<Vec<Event>> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    Ok(api.list(&ListParams::default()).await?.items)
}

/// The PIDs of redis-server processes on this machine in the cgroup of the pod with `uid`
/// (the test runs in the node's PID namespace, as root; kubelet's cgroupfs driver names pod
/// cgroups `pod<uid>`).
pub fn redis_pids_of(uid: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        if comm.trim() == "redis-server" && cgroup.contains(&format!("pod{uid}")) {
            pids.push(pid);
        }
    }
    pids
}

/// A server's `run_id` (new on every start of redis-server).
pub async fn run_id(address: SocketAddr, auth: Option<(&str, &str)>) -> anyhow::Result<String> {
    let text = redis(address, auth, &["INFO", "server"]).await?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("run_id:").map(str::to_string))
        .context("INFO server has no run_id")
}

/// Writes through the client Service until one succeeds on a server other than `old_run_id`
/// (the old primary may take writes until it is paused); returns how long that took.
pub async fn first_write(
    client_service: SocketAddr,
    auth: Option<(&str, &str)>,
    key: &str,
    old_run_id: &str,
) -> anyhow::Result<Duration> {
    first_write_within(
        client_service,
        auth,
        key,
        old_run_id,
        Duration::from_secs(90),
    )
    .await
}

/// [`first_write`], failing once `bound` has passed without one.
pub async fn first_write_within(
    client_service: SocketAddr,
    auth: Option<(&str, &str)>,
    key: &str,
    old_run_id: &str,
    bound: Duration,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        let attempt = async {
            let mut c = Connection::open(client_service, auth, Duration::from_secs(1)).await?;
            c.call(&["SET", key, "after"]).await?;
            let info = c
                .call(&["INFO", "server"])
                .await?
                .text()
                .unwrap_or_default();
            Ok::<bool, anyhow::Error>(!info.contains(old_run_id))
        };
        if attempt.await.unwrap_or(false) {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(
            started.elapsed() < bound,
            "no write succeeded on another server through the client Service for {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Keys written with `WAIT 1` (acknowledged by a replica) before a failover.
pub async fn write_acknowledged(
    client_service: SocketAddr,
    auth: Option<(&str, &str)>,
    prefix: &str,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    let mut keys = Vec::new();
    for i in 0..n {
        let key = format!("{prefix}-{i}");
        let mut c = Connection::open(client_service, auth, Duration::from_secs(2)).await?;
        c.call(&["SET", &key, &key]).await?;
        let acked = c.call(&["WAIT", "1", "2000"]).await?;
        anyhow::ensure!(
            acked != redis_operator::redis::Reply::Integer(0),
            "{key} was not acknowledged by any replica"
        );
        keys.push(key);
    }
    Ok(keys)
}

pub async fn all_present(
    address: SocketAddr,
    auth: Option<(&str, &str)>,
    keys: &[String],
) -> anyhow::Result<()> {
    for key in keys {
        let value = redis(address, auth, &["GET", key]).await?;
        anyhow::ensure!(
            value == *key,
            "{key} is missing at {address} (got {value:?})"
        );
    }
    Ok(())
}

pub async fn primary_of(clusters: &Api<RedisCluster>) -> anyhow::Result<String> {
    clusters
        .get("my-redis")
        .await?
        .status
        .and_then(|s| s.primary)
        .context("no status.primary")
}

/// Waits for a failover away from `old`; returns the new primary once the status names it.
pub async fn wait_failover(
    setup: &Setup,
    clusters: &Api<RedisCluster>,
    old: &str,
) -> anyhow::Result<String> {
    wait_failover_within(
        setup,
        clusters,
        old,
        Instant::now(),
        Duration::from_secs(60),
    )
    .await
}

/// [`wait_failover`], failing unless the status names a new primary within `bound` of
/// `since` (when the primary was lost).
pub async fn wait_failover_within(
    setup: &Setup,
    clusters: &Api<RedisCluster>,
    old: &str,
    since: Instant,
    bound: Duration,
) -> anyhow::Result<String> {
    let left = bound.saturating_sub(since.elapsed());
    e2e::eventually(
        left,
        &format!("a new primary in status within {bound:?} of losing {old}"),
        || async {
            let primary = primary_of(clusters).await?;
            Ok((primary != old).then_some(primary))
        },
    )
    .await
    .map_err(with_logs(setup.node))
}

/// What a scan of every log the cluster wrote found.
#[derive(Debug, Default)]
pub struct LogScan {
    /// Files read.
    pub files: usize,
    /// Bytes read.
    pub bytes: u64,
    /// `file: needle` for every needle found.
    pub found: Vec<String>,
    /// The container log files read (below `/var/log/pods`).
    pub container_logs: Vec<String>,
}

/// Reads every log the test cluster wrote (each process's log and the apiserver's audit
/// log below the control plane's folder, every container's log below `/var/log/pods`, the
/// node's tmpfs in this test's mount namespace) and looks for each of `needles`. Data files
/// (etcd's, containerd's) are not logs and are not read.
pub fn scan_logs(setup: &Setup, needles: &[String]) -> LogScan {
    fn walk(dir: &Path, scan: &mut LogScan, needles: &[String], every_file: bool) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(&path, scan, needles, every_file);
                continue;
            }
            let is_log = path.extension().is_some_and(|e| e == "log");
            if !kind.is_file() || !(every_file || is_log) {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            scan.files += 1;
            scan.bytes += bytes.len() as u64;
            if path.starts_with("/var/log/pods") {
                scan.container_logs.push(path.display().to_string());
            }
            for needle in needles {
                if text.contains(needle.as_str()) {
                    scan.found.push(format!("{}: {needle}", path.display()));
                }
            }
        }
    }
    let mut scan = LogScan::default();
    walk(setup.plane.root(), &mut scan, needles, false);
    walk(Path::new("/var/log/pods"), &mut scan, needles, true);
    scan
}

/// What a scan of every process's command line found.
#[derive(Debug, Default)]
pub struct CmdlineScan {
    /// Processes whose command line was read (an entry of `/proc` that is not a process, a
    /// process gone before its read, or one without a command line does not count).
    pub processes: usize,
    /// The program of each command line read: its first word's file name (`redis-server`
    /// for `/usr/bin/redis-server *:6379`, the title the server gives itself).
    pub programs: std::collections::BTreeSet<String>,
    /// `path: needle` for every needle found.
    pub found: Vec<String>,
}

/// Reads the command line of every process below `proc_root` (`/proc`) and looks for each
/// of `needles`.
pub fn scan_cmdlines(proc_root: &Path, needles: &[&str]) -> CmdlineScan {
    let mut scan = CmdlineScan::default();
    for entry in std::fs::read_dir(proc_root).into_iter().flatten().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let path = entry.path().join("cmdline");
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if bytes.is_empty() {
            continue;
        }
        scan.processes += 1;
        let text = String::from_utf8_lossy(&bytes);
        if let Some(program) = text
            .split(['\0', ' '])
            .next()
            .and_then(|first| first.rsplit('/').next())
            .filter(|p| !p.is_empty())
        {
            scan.programs.insert(program.to_string());
        }
        for needle in needles {
            if text.contains(needle) {
                scan.found.push(format!("{}: {needle}", path.display()));
            }
        }
    }
    scan
}
