//! Scale benchmark (not a timed test): 200 RedisClusters on the real control plane, against
//! the floor of creating 200 equivalent StatefulSets directly, in the same run.
//!
//! `cargo bench -p redis-operator --bench scale` prints the figures recorded in
//! docs/benchmarks.md: time until all are Running, both ways, and their ratio; reconciles and
//! API writes; the operator's peak and idle RSS; reconciles while idle after convergence.
//! `SCALE_CLUSTERS=N` changes the count.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use e2e::{ControlPlane, ControlPlaneOptions};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::{Api, ListParams, PostParams};
use redis_operator::api::v1::{Phase, RedisCluster};
use support::{Operator, create_namespace, eventually, install};

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn cluster(index: usize) -> RedisCluster {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "RedisCluster",
        "metadata": {"name": format!("bench-{index}")},
        "spec": {"replicas": 1}
    }))
    .expect("valid")
}

/// Counts the changes other controllers make to objects of `api` from now on: the counter, and
/// the task to stop.
async fn count_modifications<K>(
    api: Api<K>,
) -> anyhow::Result<(
    std::sync::Arc<std::sync::atomic::AtomicU64>,
    tokio::task::JoinHandle<()>,
)>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    use futures::StreamExt;
    let version = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = counter.clone();
    let task = tokio::spawn(async move {
        let Ok(stream) = api
            .watch(&kube::api::WatchParams::default(), &version)
            .await
        else {
            return;
        };
        let mut stream = Box::pin(stream);
        while let Some(Ok(kube::api::WatchEvent::Modified(_))) = stream.next().await {
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    Ok((counter, task))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let count: usize = std::env::var("SCALE_CLUSTERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let plane = ControlPlane::start(ControlPlaneOptions { nodes: 2 }).await?;
    if std::env::var_os("E2E_KEEP_DIR").is_some() {
        println!("control plane folder: {}", plane.root().display());
    }
    let admin = plane.client().await?;
    let webhook_port = e2e::free_port()?;
    install(&plane, webhook_port).await?;

    // The floor: the same StatefulSets the operator would make, created directly.
    create_namespace(&admin, "floor").await?;
    let floor_sets: Api<StatefulSet> = Api::namespaced(admin.clone(), "floor");
    let started = Instant::now();
    for index in 0..count {
        let mut owner = cluster(index);
        owner.metadata.namespace = Some("floor".into());
        owner.metadata.uid = Some(format!("00000000-0000-0000-0000-{index:012}"));
        let mut set = redis_operator::resources::stateful_set(
            &owner,
            &redis_operator::resources::SetInputs {
                replicas: owner.spec.replicas,
                password_version: None,
            },
        );
        set.metadata.owner_references = None;
        floor_sets.create(&PostParams::default(), &set).await?;
    }
    eventually(
        Duration::from_secs(600),
        "the floor StatefulSets to be ready",
        || async {
            let ready = floor_sets
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|s| s.status.as_ref().and_then(|st| st.ready_replicas) == Some(1))
                .count();
            Ok((ready == count).then_some(()))
        },
    )
    .await?;
    let floor = started.elapsed();
    for index in 0..count {
        floor_sets
            .delete(&format!("bench-{index}"), &Default::default())
            .await?;
    }
    eventually(Duration::from_secs(300), "floor pods to go", || async {
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(admin.clone(), "floor");
        Ok(pods
            .list(&ListParams::default())
            .await?
            .items
            .is_empty()
            .then_some(()))
    })
    .await?;

    let operator = Operator::start(&plane, "bench", webhook_port).await?;
    let pid = operator.process.pid();
    let idle_before = rss_kib(pid, "VmRSS:");
    create_namespace(&admin, "bench").await?;
    let clusters: Api<RedisCluster> = Api::namespaced(admin.clone(), "bench");
    let started = Instant::now();
    for index in 0..count {
        clusters
            .create(&PostParams::default(), &cluster(index))
            .await?;
    }
    eventually(
        Duration::from_secs(600),
        "every RedisCluster to be Running",
        || async {
            operator.check_running()?;
            let running = clusters
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|c| c.status.as_ref().and_then(|s| s.phase) == Some(Phase::Running))
                .count();
            Ok((running == count).then_some(()))
        },
    )
    .await?;
    let with_operator = started.elapsed();
    let reconciles = operator.metric("redis_operator_reconciles_total").await?;
    let writes = operator.metric("redis_operator_api_writes_total").await?;
    let peak = rss_kib(pid, "VmHWM:");

    // Idle: no reconcile should happen before the periodic resync (5 minutes). Count the
    // changes other controllers make to owned objects meanwhile, to tell them apart.
    let set_changes =
        count_modifications(Api::<StatefulSet>::namespaced(admin.clone(), "bench")).await?;
    let budget_changes = count_modifications(Api::<
        k8s_openapi::api::policy::v1::PodDisruptionBudget,
    >::namespaced(admin.clone(), "bench"))
    .await?;
    let idle_window = Duration::from_secs(20);
    tokio::time::sleep(idle_window).await;
    set_changes.1.abort();
    budget_changes.1.abort();
    let idle_reconciles = operator.metric("redis_operator_reconciles_total").await? - reconciles;
    let idle_writes = operator.metric("redis_operator_api_writes_total").await? - writes;
    let idle_rss = rss_kib(pid, "VmRSS:");

    println!("clusters                         {count}");
    println!(
        "floor (StatefulSets direct)      {:.1} s",
        floor.as_secs_f64()
    );
    println!(
        "with the operator                {:.1} s",
        with_operator.as_secs_f64()
    );
    println!(
        "ratio                            {:.2}x the floor",
        with_operator.as_secs_f64() / floor.as_secs_f64()
    );
    println!("reconciles until converged       {reconciles}");
    println!(
        "API writes until converged       {writes} ({:.1} per cluster)",
        writes / count as f64
    );
    println!(
        "reconciles in {}s idle after     {idle_reconciles}",
        idle_window.as_secs()
    );
    println!(
        "API writes in {}s idle after     {idle_writes} (leader Lease renewals; no reconcile)",
        idle_window.as_secs()
    );
    println!(
        "owned objects changed when idle  {} StatefulSets, {} PodDisruptionBudgets",
        set_changes.0.load(std::sync::atomic::Ordering::Relaxed),
        budget_changes.0.load(std::sync::atomic::Ordering::Relaxed)
    );
    println!(
        "operator RSS before work         {:.1} MiB",
        idle_before as f64 / 1024.0
    );
    println!(
        "operator peak RSS                {:.1} MiB",
        peak as f64 / 1024.0
    );
    println!(
        "operator RSS idle, converged     {:.1} MiB",
        idle_rss as f64 / 1024.0
    );
    Ok(())
}
