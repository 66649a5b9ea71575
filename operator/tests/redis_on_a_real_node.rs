//! The operator as users run it, on the real node: the operator is a pod from its own image
//! (this build's binary) under its generated RBAC, and each RedisCluster runs Debian's
//! redis-server in real pods. Replication, failover, rolling updates and passwords are checked
//! against what the Redis servers themselves say, over the pod network.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use e2e::node::{ContainerConfig, RootfsEntry};
use e2e::{ControlPlane, RealNode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use redis_operator::api::v1::{Phase, RedisCluster};
use redis_operator::redis::{Connection, Replication, Role};
use serde_json::json;
use tokio::sync::OnceCell;

const OPERATOR_NAMESPACE: &str = "redis-operator-system";

/// The Redis image tags the CRD's versions map to: one build of Debian's redis-server under
/// each tag, so a version change is a real image change (a new reference) of the same binary.
const VERSIONS: [&str; 3] = ["6.2", "7.0", "7.2"];

struct Setup {
    node: &'static RealNode,
    plane: &'static std::sync::Arc<ControlPlane>,
}

static SETUP: OnceCell<Setup> = OnceCell::const_new();

/// The real node, the Redis images, and the operator Deployment (2 replicas, one leader),
/// once per test binary.
async fn setup() -> anyhow::Result<&'static Setup> {
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
            Ok(Setup { node, plane })
        })
        .await
}

/// Debian's redis-server and redis-cli with their libraries, and busybox for the start and
/// probe scripts (`sh`, `sha256sum`, `cat`).
async fn push_redis_images(node: &RealNode) -> anyhow::Result<BTreeMap<&'static str, String>> {
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
            .push_programs(
                &format!("e2e/redis:{version}"),
                &[server, cli],
                extra.clone(),
                &config,
            )
            .await?;
        images.insert(version, image);
    }
    Ok(images)
}

/// `redis-operator manifests`, applied as written except the operator image (this build's,
/// from the local registry), the Redis images (the local ones) and two replicas.
async fn deploy_operator(
    node: &RealNode,
    client: &kube::Client,
    redis_images: &BTreeMap<&'static str, String>,
) -> anyhow::Result<()> {
    let binary = Path::new(env!("CARGO_BIN_EXE_redis-operator"));
    let image = node
        .push_programs(
            "e2e/redis-operator:dev",
            &[binary],
            Vec::new(),
            &ContainerConfig {
                entrypoint: vec!["/usr/bin/redis-operator".into()],
                user: "65532:65532".into(),
                ..ContainerConfig::default()
            },
        )
        .await?;
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

fn operator_logs(node: &RealNode) -> String {
    let mut all = String::new();
    for pod in operator_pod_names(node) {
        if let Ok(output) = node.kubectl(&["logs", "-n", OPERATOR_NAMESPACE, &pod, "--tail=-1"]) {
            all.push_str(&String::from_utf8_lossy(&output.stdout));
        }
    }
    all
}

fn operator_pod_names(node: &RealNode) -> Vec<String> {
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
fn with_logs(node: &RealNode) -> impl FnOnce(anyhow::Error) -> anyhow::Error + '_ {
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

async fn new_cluster(
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

fn is_running(cluster: &RedisCluster, replicas: i32) -> bool {
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

async fn wait_running(
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

async fn pod_address(pods: &Api<Pod>, name: &str) -> anyhow::Result<SocketAddr> {
    let pod = pods.get(name).await?;
    let ip = pod
        .status
        .and_then(|s| s.pod_ip)
        .with_context(|| format!("{name} has no IP"))?;
    Ok(SocketAddr::new(ip.parse()?, 6379))
}

async fn service_address(
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
    Ok(SocketAddr::new(ip.parse()?, 6379))
}

/// One command on a fresh connection (a Service address picks its endpoint per connection).
async fn redis(
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

async fn replication(
    address: SocketAddr,
    auth: Option<(&str, &str)>,
) -> anyhow::Result<Replication> {
    let text = redis(address, auth, &["INFO", "replication"]).await?;
    Replication::parse(&text).with_context(|| format!("no role in {text}"))
}

/// The replicas of a cluster without a password: the test talks to them as `default`.
const NO_AUTH: Option<(&str, &str)> = None;

async fn events(client: &kube::Client, ns: &str) -> anyhow::Result<Vec<Event>> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    Ok(api.list(&ListParams::default()).await?.items)
}

/// The PIDs of redis-server processes on this machine in the cgroup of the pod with `uid`
/// (the test runs in the node's PID namespace, as root; kubelet's cgroupfs driver names pod
/// cgroups `pod<uid>`).
fn redis_pids_of(uid: &str) -> Vec<u32> {
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
async fn run_id(address: SocketAddr, auth: Option<(&str, &str)>) -> anyhow::Result<String> {
    let text = redis(address, auth, &["INFO", "server"]).await?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("run_id:").map(str::to_string))
        .context("INFO server has no run_id")
}

/// Writes through the client Service until one succeeds on a server other than `old_run_id`
/// (the old primary may take writes until it is paused); returns how long that took.
async fn first_write(
    client_service: SocketAddr,
    auth: Option<(&str, &str)>,
    key: &str,
    old_run_id: &str,
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
            started.elapsed() < Duration::from_secs(90),
            "no write succeeded through the client Service for 90 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Keys written with `WAIT 1` (acknowledged by a replica) before a failover.
async fn write_acknowledged(
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

async fn all_present(
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

async fn primary_of(clusters: &Api<RedisCluster>) -> anyhow::Result<String> {
    clusters
        .get("my-redis")
        .await?
        .status
        .and_then(|s| s.primary)
        .context("no status.primary")
}

/// Waits for a failover away from `old`; returns the new primary once the client Service
/// takes writes and every pod of the cluster follows it.
async fn wait_failover(
    setup: &Setup,
    clusters: &Api<RedisCluster>,
    old: &str,
) -> anyhow::Result<String> {
    e2e::eventually(
        Duration::from_secs(60),
        "a new primary in status",
        || async {
            let primary = primary_of(clusters).await?;
            Ok((primary != old).then_some(primary))
        },
    )
    .await
    .map_err(with_logs(setup.node))
}

#[tokio::test]
async fn replication_failover_scaling_rolling_update_and_deletion_with_real_redis()
-> anyhow::Result<()> {
    let setup = setup().await?;
    // A client per test: each test has its own runtime, and a client's worker dies with the
    // runtime it was made in.
    let client = &setup.plane.client().await?;
    let ns = "redis-real";
    setup.node.namespace(client, ns).await?;
    let started = Instant::now();
    let clusters = new_cluster(
        client,
        ns,
        json!({"replicas": 3, "redisVersion": "7.2", "persistence": {"size": "64Mi"}}),
    )
    .await?;

    // 1. Three pods Ready by their real probes; the Ready condition names the primary.
    let running = wait_running(setup, &clusters, 3, Duration::from_secs(180)).await?;
    println!(
        "apply → Ready=True with 3 real Redis pods: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let status = running.status.clone().unwrap();
    assert_eq!(status.primary.as_deref(), Some("my-redis-0"));
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert!(
        ready.message.contains("my-redis-0 is the primary"),
        "{}",
        ready.message
    );

    // 2. A write through the client Service is read back from each replica.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let service = service_address(client, ns, "my-redis").await?;
    assert_eq!(
        redis(service, NO_AUTH, &["SET", "greeting", "hello"]).await?,
        "OK"
    );
    assert_eq!(redis(service, NO_AUTH, &["WAIT", "2", "5000"]).await?, "2");
    let primary_info = replication(pod_address(&pods, "my-redis-0").await?, NO_AUTH).await?;
    assert_eq!(primary_info.role, Role::Primary);
    assert_eq!(primary_info.connected_replicas, 2, "{primary_info:?}");
    for replica in ["my-redis-1", "my-redis-2"] {
        let address = pod_address(&pods, replica).await?;
        assert_eq!(
            redis(address, NO_AUTH, &["GET", "greeting"]).await?,
            "hello",
            "{replica}"
        );
        let info = replication(address, NO_AUTH).await?;
        assert!(
            matches!(&info.role, Role::Replica { host, link_up: true, .. } if host.starts_with("my-redis-0.")),
            "{replica}: {info:?}"
        );
        let refused = redis(address, NO_AUTH, &["SET", "x", "y"]).await;
        assert!(
            refused.is_err_and(|e| e.to_string().contains("READONLY")),
            "{replica} takes writes"
        );
    }
    let replicas_service = service_address(client, ns, "my-redis-replicas").await?;
    assert_eq!(
        redis(replicas_service, NO_AUTH, &["GET", "greeting"]).await?,
        "hello"
    );
    assert_eq!(
        replication(replicas_service, NO_AUTH).await?.role != Role::Primary,
        true,
        "the replicas Service reached the primary"
    );

    // 3. Five replicas: the two new ones sync the existing key.
    clusters
        .patch(
            "my-redis",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await?;
    wait_running(setup, &clusters, 5, Duration::from_secs(120)).await?;
    for replica in ["my-redis-3", "my-redis-4"] {
        let address = pod_address(&pods, replica).await?;
        assert_eq!(
            redis(address, NO_AUTH, &["GET", "greeting"]).await?,
            "hello",
            "{replica}"
        );
    }

    // 4a. The primary's pod is deleted: a replica takes over, no acknowledged write is lost,
    // and the pod comes back as a replica.
    let keys = write_acknowledged(service, NO_AUTH, "before-delete", 50).await?;
    let old_run = run_id(pod_address(&pods, "my-redis-0").await?, NO_AUTH).await?;
    let deleted_at = Instant::now();
    pods.delete("my-redis-0", &DeleteParams::default()).await?;
    let took = first_write(service, NO_AUTH, "after-delete", &old_run).await?;
    println!(
        "primary pod deleted → first write through the client Service: {:.2} s",
        took.as_secs_f64()
    );
    let new_primary = wait_failover(setup, &clusters, "my-redis-0").await?;
    let new_address = pod_address(&pods, &new_primary).await?;
    all_present(new_address, NO_AUTH, &keys).await?;
    assert!(deleted_at.elapsed() < Duration::from_secs(60));
    let running = wait_running(setup, &clusters, 5, Duration::from_secs(120)).await?;
    assert_eq!(
        running.status.unwrap().primary.as_deref(),
        Some(new_primary.as_str())
    );
    let returned = replication(pod_address(&pods, "my-redis-0").await?, NO_AUTH).await?;
    assert!(
        matches!(&returned.role, Role::Replica { host, .. } if host.starts_with(&format!("{new_primary}."))),
        "the old primary came back as {returned:?}"
    );
    all_present(pod_address(&pods, "my-redis-0").await?, NO_AUTH, &keys).await?;
    let reasons: Vec<String> = events(client, ns)
        .await?
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    // A terminating primary that still answers is switched away from under control
    // (Switched); one that is gone already is failed over from (FailedOver).
    assert!(
        reasons.iter().any(|r| r == "FailedOver" || r == "Switched"),
        "no failover Event among {reasons:?}"
    );

    // 4b. The Redis process in the primary's container is killed (the pod stays): the
    // restarted Redis does not lead with what it lost; a replica takes over.
    let keys = write_acknowledged(service, NO_AUTH, "before-kill", 20).await?;
    let victim = new_primary.clone();
    let old_run = run_id(pod_address(&pods, &victim).await?, NO_AUTH).await?;
    let victim_uid = pods.get(&victim).await?.metadata.uid.context("a pod uid")?;
    let pids = redis_pids_of(&victim_uid);
    anyhow::ensure!(
        pids.len() == 1,
        "found redis-server pids {pids:?} for {victim}"
    );
    // SAFETY: kill(2) on a pid read from /proc; at worst it is gone already.
    let killed = unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    anyhow::ensure!(
        killed == 0,
        "kill {}: {}",
        pids[0],
        std::io::Error::last_os_error()
    );
    let took = first_write(service, NO_AUTH, "after-kill", &old_run).await?;
    println!(
        "primary's Redis killed → first write through the client Service: {:.2} s",
        took.as_secs_f64()
    );
    let after_kill = wait_failover(setup, &clusters, &victim).await?;
    all_present(pod_address(&pods, &after_kill).await?, NO_AUTH, &keys).await?;
    wait_running(setup, &clusters, 5, Duration::from_secs(120)).await?;
    let victim_now = replication(pod_address(&pods, &victim).await?, NO_AUTH).await?;
    assert!(
        matches!(&victim_now.role, Role::Replica { host, link_up: true, .. } if host.starts_with(&format!("{after_kill}."))),
        "{victim} after its restart: {victim_now:?}"
    );

    // 5. A version change rolls one pod at a time, replicas first, the primary last after a
    // controlled switch; every key survives.
    let all_keys: Vec<String> = (0..20).map(|i| format!("before-kill-{i}")).collect();
    let primary_before = primary_of(&clusters).await?;
    let uids_before: BTreeMap<String, String> = pods
        .list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
        .await?
        .items
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap(),
                p.metadata.uid.clone().unwrap(),
            )
        })
        .collect();
    clusters
        .patch(
            "my-redis",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"redisVersion": "7.0"}})),
        )
        .await?;
    let mut order: Vec<String> = Vec::new();
    let mut most_unready = 0;
    let rolled = Instant::now();
    loop {
        anyhow::ensure!(
            rolled.elapsed() < Duration::from_secs(300),
            "the rolling update did not finish; order so far {order:?}"
        );
        let list = pods
            .list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
            .await?
            .items;
        let unready = 5 - list
            .iter()
            .filter(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        most_unready = most_unready.max(unready);
        for pod in &list {
            let name = pod.metadata.name.clone().unwrap();
            if uids_before.get(&name) != pod.metadata.uid.as_ref() && !order.contains(&name) {
                order.push(name);
            }
        }
        let cluster = clusters.get("my-redis").await?;
        if order.len() == 5 && is_running(&cluster, 5) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "rolling update order: {order:?} (primary before: {primary_before}); at most {most_unready} pods unready at once, {:.1} s",
        rolled.elapsed().as_secs_f64()
    );
    assert_eq!(
        order.last(),
        Some(&primary_before),
        "the primary was not restarted last: {order:?}"
    );
    let images: Vec<String> = pods
        .list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
        .await?
        .items
        .into_iter()
        .map(|p| {
            p.spec.unwrap().containers[0]
                .image
                .clone()
                .unwrap_or_default()
        })
        .collect();
    assert!(
        images.iter().all(|i| i.ends_with("e2e/redis:7.0")),
        "{images:?}"
    );
    let primary = primary_of(&clusters).await?;
    assert_ne!(
        primary, primary_before,
        "the primary was switched away from before its restart"
    );
    all_present(service, NO_AUTH, &all_keys).await?;
    let switched = events(client, ns).await?.into_iter().any(|e| {
        e.reason.as_deref() == Some("Switched") && e.action.as_deref() == Some("RollingUpdate")
    });
    assert!(switched, "no Switched Event for the rolling update");

    // 6. Deletion: the finalizer removes the claims; nothing the cluster owned is left.
    clusters
        .delete("my-redis", &DeleteParams::default())
        .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    e2e::eventually(
        Duration::from_secs(120),
        "every object of the cluster gone",
        || async {
            let selector = ListParams::default().labels("app.kubernetes.io/instance=my-redis");
            let left = pods.list(&selector).await?.items.len()
                + claims.list(&selector).await?.items.len()
                + maps.list(&selector).await?.items.len()
                + services.list(&selector).await?.items.len()
                + secrets.list(&selector).await?.items.len()
                + usize::from(clusters.get_opt("my-redis").await?.is_some());
            Ok((left == 0).then_some(()))
        },
    )
    .await
    .map_err(with_logs(setup.node))?;
    Ok(())
}

#[tokio::test]
async fn the_password_is_on_no_command_line_and_a_new_one_rolls_the_pods() -> anyhow::Result<()> {
    let setup = setup().await?;
    // A client per test: each test has its own runtime, and a client's worker dies with the
    // runtime it was made in.
    let client = &setup.plane.client().await?;
    let ns = "redis-secret";
    setup.node.namespace(client, ns).await?;
    let first = format!("first password {}", std::process::id());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "redis-auth"},
        "stringData": {"password": first},
    }))?;
    secrets.create(&PostParams::default(), &secret).await?;
    let clusters = new_cluster(
        client,
        ns,
        json!({"replicas": 2, "passwordSecret": {"name": "redis-auth", "key": "password"}}),
    )
    .await?;
    wait_running(setup, &clusters, 2, Duration::from_secs(180)).await?;

    let service = service_address(client, ns, "my-redis").await?;
    let denied = redis(service, NO_AUTH, &["SET", "k", "v"]).await;
    assert!(
        denied.is_err_and(|e| e.to_string().contains("NOAUTH")),
        "a write without the password was taken"
    );
    assert_eq!(
        redis(service, Some(("default", &first)), &["SET", "k", "v"]).await?,
        "OK"
    );

    // No process of the node (containers, probes, the operator) has the password in argv.
    let scan = |password: &str| {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let path = entry.path().join("cmdline");
            if let Ok(bytes) = std::fs::read(&path)
                && String::from_utf8_lossy(&bytes).contains(password)
            {
                found.push(path.display().to_string());
            }
        }
        found
    };
    // Probes run every 2 s: look for 5 s so that their processes are caught too.
    let scanned = Instant::now();
    let mut seen = 0usize;
    while scanned.elapsed() < Duration::from_secs(5) {
        let found = scan(&first);
        assert!(found.is_empty(), "the password is in {found:?}");
        seen += std::fs::read_dir("/proc")?.count();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        seen > 1000,
        "the scan read almost nothing from /proc ({seen} entries)"
    );
    // And from inside a Redis container, as its user sees it.
    let inside = setup.node.kubectl(&[
        "exec",
        "-n",
        ns,
        "my-redis-0",
        "-c",
        "redis",
        "--",
        "sh",
        "-c",
        "for f in /proc/[0-9]*/cmdline; do cat \"$f\"; echo; done",
    ])?;
    anyhow::ensure!(
        inside.status.success(),
        "kubectl exec failed: {}",
        String::from_utf8_lossy(&inside.stderr)
    );
    let argv = String::from_utf8_lossy(&inside.stdout);
    assert!(
        argv.contains("redis-server"),
        "the container's processes were not read: {argv}"
    );
    assert!(
        !argv.contains(&first),
        "the password is in a container's argv"
    );
    assert!(
        !operator_logs(setup.node).contains(&first),
        "the operator logged the password"
    );
    for event in events(client, ns).await? {
        assert!(
            !event.note.unwrap_or_default().contains(&first),
            "an Event holds the password"
        );
    }

    // A new password rolls the pods; the new one works, the old one no longer does.
    let uids = |list: Vec<Pod>| -> Vec<String> {
        list.into_iter().filter_map(|p| p.metadata.uid).collect()
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let before = uids(
        pods.list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
            .await?
            .items,
    );
    let second = format!("second password {}", std::process::id());
    secrets
        .patch(
            "redis-auth",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": second}})),
        )
        .await?;
    e2e::eventually(
        Duration::from_secs(180),
        "every pod restarted with the new password",
        || async {
            let now = uids(
                pods.list(&ListParams::default().labels("app.kubernetes.io/instance=my-redis"))
                    .await?
                    .items,
            );
            let rolled = now.len() == 2 && now.iter().all(|u| !before.contains(u));
            let cluster = clusters.get("my-redis").await?;
            Ok((rolled && is_running(&cluster, 2)).then_some(()))
        },
    )
    .await
    .map_err(with_logs(setup.node))?;
    let service = service_address(client, ns, "my-redis").await?;
    assert_eq!(
        redis(service, Some(("default", &second)), &["GET", "k"]).await?,
        "v"
    );
    let old = redis(service, Some(("default", &first)), &["GET", "k"]).await;
    assert!(
        old.is_err_and(|e| e.to_string().contains("WRONGPASS")),
        "the old password still works"
    );
    let found = scan(&second);
    assert!(found.is_empty(), "the new password is in {found:?}");
    Ok(())
}
